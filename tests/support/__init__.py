"""What the tests share: meshes, fakes, sample scenes and files."""
