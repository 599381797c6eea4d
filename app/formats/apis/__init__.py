"""The vendor APIs the proxy speaks (SPEC §10), as pure wire knowledge: where each keeps
its history, how its replies and streams look, how it says the context is too long."""
