"""tfrecord_engine.arrow's tests: skipped without pyarrow, except under
``TFE_REQUIRE_FRAMEWORKS=1`` (``make test``, CI), where a missing pyarrow is an error."""

from __future__ import annotations

from ..optional import require

require("pyarrow")
