"""What the harness needs: the driver interface every implementation is reached
through, loading implementations, scripts of driver operations and their traces,
and the runner behind `loomcheck run` and `loomcheck replay`."""
