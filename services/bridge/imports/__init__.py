"""Files brought into a scene: an asset file's objects, its budget and outside files checked."""
