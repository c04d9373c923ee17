"""What the calls of SessionService and WorkspaceService do, transport-free.

`service.py` implements the session port, `sessions.py` the sessions' lifecycle,
`workspace_service.py` the workspace port; `validation.py` checks what clients send,
`views.py` and `pages.py` shape what they get back.

Nothing is re-exported here: importing one part never imports the others.
"""
