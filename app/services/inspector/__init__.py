"""What the inspector page shows about a session, computed without any web framework."""
