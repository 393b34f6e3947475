"""Hardware facts: cited datasheet specs per GPU (data/hw) and per-architecture limits (data/arch)."""
