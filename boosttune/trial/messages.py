"""One line for an exception raised by a team's code or by MindSpore, where a traceback would be pages long.

Pure: it reads the exception and its frames; the trial's modules (parts, optim, rebuild, runner) share it.
"""

from __future__ import annotations

import traceback

__all__ = ["first_line", "user_error"]


def user_error(error: BaseException) -> str:
    """``ValueError: bad shape (at my_model.py:42, in build)``: the user's last frame, not ours, and MindSpore's
    first line, not its C++ call stack."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/boosttune/" not in f.filename
              and "site-packages" not in f.filename]
    message = " ".join(first_line(error).split(": ", 1)[-1].split()) if str(error).strip() else ""
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    if frames:
        text += f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}, in {frames[-1].name})"
    return text


_PIPELINE_HEADER = "- Dataset Pipeline Error Message:"


def first_line(error: BaseException) -> str:
    """MindSpore's first meaningful line, after the exception's type (its messages carry pages of C++ context)."""
    text = str(error).strip() or type(error).__name__
    if _PIPELINE_HEADER in text:  # the dataset engine's own message names the op and the file it failed on
        after = [line.strip() for line in text.split(_PIPELINE_HEADER, 1)[1].splitlines()]
        message = next((line for line in after if line and not line.startswith("-")), "")
        message = message.removeprefix("[ERROR] ").split(" Dump the abnormal image")[0]
        if message:
            return f"{type(error).__name__}: dataset pipeline: {message}"
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("-"):
            return f"{type(error).__name__}: {line}"
    return type(error).__name__
