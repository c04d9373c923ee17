"""The built-in `demo` model: deterministic, offline, driven by directives in the prompt.

`model.py` is the pydantic-ai model and its stream, `replies.py` decides what it answers
from the history alone, `directives.py` is the prompt language it follows. Nothing in this
package does I/O.
"""

from blitz.agent.demo.model import DEMO_MODEL_NAME, DemoModel

__all__ = ["DEMO_MODEL_NAME", "DemoModel"]
