"""Model backends: litellm-served policies, critics and users, and the vLLM server helper.

Nothing here is imported until a model string is used (`import litellm` costs seconds);
`castbench._agents.models.settings` is the exception: it is litellm-free and merges/validates settings.
"""
