"""The CAST training stages as a castbench plugin (`pip install 'castbench[train]'`, then
`castbench cast ...`).

CAST (Critique-Aware Supervision for Training) turns task outcomes into action-level critique
supervision: a teacher's trajectories are labelled action by action, a small critic is trained
on the labels, and a policy is then trained on the successful trajectories it produced with that
critic in the loop. Every stage here drives castbench itself (`castbench.evaluate`, the stored
trials, the privileged labeler's labels, the model agents' prompts), never a loop of its own:

    collect -> annotate -> critic-data -> train-critic -> collect --critic -> policy-data -> train-policy

A recipe file (`castbench_cast.recipe`) fixes a whole pipeline; each stage writes its outputs
with a manifest (`castbench_cast.manifest`) and is skipped when its inputs have not changed.
"""
