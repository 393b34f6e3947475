"""Reading GPU code objects: AMD (amdhsa ELF, offload bundles) and NVIDIA (cubin, fatbin, host ELF)."""
