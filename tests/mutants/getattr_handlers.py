"""The Python analogue of ADR 0077's `handlers["__proto__"]` bug: fold handlers
looked up with getattr on a namespace, so `__class__`, `__init__` or `mro`
find inherited attributes and the fold calls something that is not a handler."""

from __future__ import annotations

from collections.abc import Mapping

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS


class _Namespace:
    pass


for _name, _handler in HANDLERS.items():
    setattr(_Namespace, _name, staticmethod(_handler))


class AttributeHandlers(Mapping):
    def get(self, key, default=None):
        return getattr(_Namespace, key, default)

    def __getitem__(self, key):
        return getattr(_Namespace, key)

    def __iter__(self):
        return iter(HANDLERS)

    def __len__(self):
        return len(HANDLERS)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers=AttributeHandlers())
