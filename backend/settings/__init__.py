"""The sections of backend.config.Settings, one module each (read them there: `Settings` is their union)."""
