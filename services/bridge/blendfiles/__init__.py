"""A .blend file's blocks and what it refers to outside itself, read without Blender."""
