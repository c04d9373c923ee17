"""Workflow runs: `/run` turns carried out step by step, and WorkflowService.

`workflow_runs.py` is the driver's runner of workflow runs, `step_loop.py` one advance of a
run step after step, `steps/` the executor of each step type, `step_context.py` what an
executor is handed and the interface it implements, `workflow_state.py` what a run stores
and sends for each step (`StepStatus`), `workflow_service.py` the workflow port. The files'
format is `blitz.workflows`.

Nothing is re-exported here: importing one part never imports the others.
"""
