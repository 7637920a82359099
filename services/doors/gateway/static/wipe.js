// The before/after wipe: the two pictures of a comparison stacked, the "before" one cut
// at the slider, so one line sweeps across the change. Shown once both pictures loaded
// (app.js calls updateWipe after each); the slider moves by mouse, touch or keyboard.
"use strict";

function updateWipe() {
  const before = $("before").getAttribute("src");
  const after = $("after").getAttribute("src");
  const wipe = $("wipe");
  wipe.hidden = !(before && after);
  if (wipe.hidden) return;
  $("wipe-before").src = before;
  $("wipe-after").src = after;
  cutWipe();
}

function cutWipe() {
  const at = Number($("wipe-range").value);
  $("wipe-before").style.clipPath = `inset(0 ${100 - at}% 0 0)`;
}

document.addEventListener("DOMContentLoaded", () => {
  $("wipe-range").addEventListener("input", cutWipe);
});
