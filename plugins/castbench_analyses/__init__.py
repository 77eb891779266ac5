"""castbench_analyses: the analyses that run more than an evaluation, outside castbench's core.

- `castbench profile` (`profile_run`, `profile_metrics`, `profile_report`): a reliability profile
  of one agent from the clean and perturbed evaluations of the same tasks and seeds
  (docs/profile.md);
- `castbench counterfactuals` and `eval --counterfactuals` (`counterfactual`,
  `counterfactual_report`, `counterfactual_metrics`, `branches`): every critic trial branched at
  each verdict and the other verdict played to the end (docs/counterfactuals.md);
- `frames`: stored runs as pandas DataFrames (`castbench.trials_df`, `steps_df`, `verdicts_df`);
- `castbench runs why` (`why_cmd`, `why`, `why_judge`): each failed trial's cause and party, grouped,
  and an LLM judge's agreement with the rules (the attributions are the core's `castbench.attribute`).

It ships in castbench's wheel and needs no extra; the core reaches it through the
`castbench.commands` (`profile`, `counterfactuals`, `runs.why`) and `castbench.analyses` entry
points, and the public `castbench.profile`, `castbench.trials_df` and their siblings.
"""
