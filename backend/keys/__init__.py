"""Personal API keys: made by a signed-in user, kept as a sha256, acting as their owner under RLS."""
