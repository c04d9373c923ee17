"""Workflows: durable multi-step runs of a session, defined in YAML files (docs/workflows.md).

This package holds what a workflow *is*: the definition models, the YAML loader with its
checks, the sandboxed templates and the catalog of files a session can run. It imports
neither the core nor the agent; the core drives runs with it.
"""

from blitz.workflows.catalog import (
    MAX_DEPTH,
    WORKSPACE_FOLDER,
    Found,
    bind_params,
    resolve,
    scan,
    workflows_of,
)
from blitz.workflows.definitions import MAX_STEPS, STEP_TYPES, Step, Workflow
from blitz.workflows.loading import MAX_FILE_BYTES, load_workflow
from blitz.workflows.templates import (
    BudgetExceeded,
    TemplateBudget,
    TemplateRefused,
    condition,
    condition_off_loop,
    references,
    render,
    render_off_loop,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_STEPS",
    "STEP_TYPES",
    "WORKSPACE_FOLDER",
    "BudgetExceeded",
    "Found",
    "Step",
    "TemplateBudget",
    "TemplateRefused",
    "Workflow",
    "bind_params",
    "condition",
    "condition_off_loop",
    "load_workflow",
    "references",
    "render",
    "render_off_loop",
    "resolve",
    "scan",
    "workflows_of",
]
