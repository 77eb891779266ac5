"""Reports: run summaries (`summary`: JSON), tables on screen (`tables`), the critic report, trait
sweeps. Import each name from the module that defines it, so that a command that needs one report
module (`runs list`'s `runs`) loads none of the others' grading and attribution (#59)."""
