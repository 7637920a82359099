// A revision's change list and its reviews: the "Changes" button of each history row
// shows what the revision changed against the one before it, and the review form records
// an approval or a request for changes on it (GET .../changes, POST .../review).
"use strict";

function changesButton(sceneId, revision) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Changes";
  button.dataset.testid = "changes";
  button.setAttribute("aria-label", `What revision ${revision} of ${sceneId} changed`);
  button.addEventListener("click", () => showChanges(sceneId, revision));
  return button;
}

async function showChanges(sceneId, revision) {
  showError("");
  try {
    const url = sceneUrl(sceneId, `/changes?revision=${encodeURIComponent(revision)}`);
    const listed = await (await api(url)).json();
    $("changes-heading").textContent = `What revision ${listed.revision} changed`;
    $("changes-text").textContent = listed.text.join("\n");
    const form = $("review-form");
    form.dataset.scene = sceneId;
    form.dataset.revision = String(listed.revision);
    $("changes-section").hidden = false;
  } catch (error) {
    showError(error.message);
  }
}

async function submitReview(event) {
  event.preventDefault();
  const form = $("review-form");
  const { scene, revision } = form.dataset;
  const body = { verdict: $("review-verdict").value, note: $("review-note").value };
  const button = $("review-submit");
  button.disabled = true;
  showError("");
  try {
    const path = sceneUrl(scene, `/revisions/${encodeURIComponent(revision)}/review`);
    await api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    $("review-note").value = "";
    await showChanges(scene, revision);
  } catch (error) {
    showError(error.message);
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("review-form").addEventListener("submit", submitReview);
});
