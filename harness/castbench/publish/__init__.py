"""Publishing runs: portable exports, their import, and leaderboards built from them."""
