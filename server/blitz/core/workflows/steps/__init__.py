"""The executors of a workflow's steps, one module per step type, and their table.

Each implements `step_context.StepExecutor`: `prompt.py` (one agent run on the session's
conversation), `command.py` (one run_command call by the scripted model, and its `until`
check), `approval.py` (a question, or a plan's accept/reject), `sub_workflow.py` (another
workflow in a nested frame). The step loop (`step_loop.py`) picks one by the step's `type`.
"""

from __future__ import annotations

from collections.abc import Mapping

from blitz.core.workflows.step_context import RunFrame, StepExecutor
from blitz.core.workflows.steps.approval import ApprovalExecutor
from blitz.core.workflows.steps.command import CommandExecutor
from blitz.core.workflows.steps.prompt import PromptExecutor
from blitz.core.workflows.steps.sub_workflow import SubWorkflowExecutor

__all__ = ["executors"]


def executors(nested: RunFrame) -> Mapping[str, StepExecutor]:
    """Each step type's executor (`definitions.STEP_TYPES`); `nested` runs a sub-workflow's
    frame."""
    return {
        "prompt": PromptExecutor(),
        "command": CommandExecutor(),
        "approval": ApprovalExecutor(),
        "workflow": SubWorkflowExecutor(nested),
    }
