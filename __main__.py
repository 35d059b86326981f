from loomcheck.cli import main

raise SystemExit(main())
