"""Moved to app.formats.vendor.replies (vendor wire knowledge lives with the formats); this
re-export keeps branches that import the old path working until they are merged."""

from app.formats.vendor.replies import (
    ReplyCapture as ReplyCapture,
)
from app.formats.vendor.replies import (
    UpstreamReply as UpstreamReply,
)
from app.formats.vendor.replies import (
    reply_from_body as reply_from_body,
)
from app.formats.vendor.replies import (
    usage_report as usage_report,
)
