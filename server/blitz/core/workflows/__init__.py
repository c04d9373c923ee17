"""Workflow runs: `/run` turns carried out step by step, and WorkflowService.

`workflow_runs.py` is the driver's runner of workflow runs, `workflow_state.py` what a run
stores and sends for each step, `workflow_service.py` the workflow port. The files' format
is `blitz.workflows`.

Nothing is re-exported here: importing one part never imports the others.
"""
