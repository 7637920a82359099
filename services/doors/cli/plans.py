"""Reading a plan file a person wrote (``run --plan``, ``runs rerun|fork --plan``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.doors.core.client import ClientError


def load_plan(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ClientError(f"cannot read plan {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ClientError(f"plan {path} is not JSON: {exc}") from None
    except RecursionError:
        raise ClientError(
            f"plan {path} is nested too deeply to read; an operation set (spec 000) is a "
            "list of flat operations"
        ) from None
