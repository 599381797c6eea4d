"""Moved to app.formats.vendor.overflow (vendor wire knowledge lives with the formats); this
re-export keeps branches that import the old path working until they are merged."""

from app.formats.vendor.overflow import (
    is_context_overflow as is_context_overflow,
)
