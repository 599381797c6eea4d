"""The inspector page (SPEC §12): server-rendered HTML over the session store."""
