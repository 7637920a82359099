"""What the bridge renders or writes out of a scene: previews, frames, glTF and exports."""
