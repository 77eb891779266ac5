"""The vocabulary every layer shares: actions and turns (conversation), the dialogue phrasebook,
errors, defaults, places on disk, the version and deprecations."""
