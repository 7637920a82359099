// Whether the mesh answers: when the runs list cannot be read (app.js asks every
// RUNS_POLL_MS), the page says since when, marks what it shows as possibly stale, and
// disables what cannot work without the mesh (a new run, approving, rejecting, reverting)
// until an answer comes again. Loaded after app.js.
"use strict";

const NEEDS_MESH = '[data-testid="submit"], [data-testid="approve"], [data-testid="reject"], '
  + '[data-testid="approve-always"], [data-testid="cancel-run"], [data-testid="revert"]';
let unreachableSince = null;

function meshUnreachable(error) {
  if (unreachableSince === null) unreachableSince = new Date();
  const box = $("offline");
  const why = error && error.status ? ` (the gateway answered ${error.status})` : "";
  box.textContent = `The mesh cannot be reached since ${unreachableSince.toLocaleTimeString()}`
    + `${why}. What this page shows may be out of date; new runs and approvals wait until `
    + 'it answers again (is "blendmesh up" running?).';
  box.hidden = false;
  $("runs-note").textContent = "Not up to date: the mesh cannot be reached.";
  disableWhatNeedsMesh();
}

function disableWhatNeedsMesh() {
  for (const button of document.querySelectorAll(NEEDS_MESH)) {
    if (!button.disabled) {
      button.disabled = true;
      button.dataset.offline = "1"; // re-enabled by meshReached, and only these
    }
  }
}

function meshReached() {
  if (unreachableSince === null) return;
  unreachableSince = null;
  $("offline").hidden = true;
  for (const button of document.querySelectorAll("[data-offline]")) {
    button.disabled = false;
    delete button.dataset.offline;
  }
}

// A button drawn while the mesh is away (an approval card already listed) starts disabled.
new MutationObserver(() => {
  if (unreachableSince !== null) disableWhatNeedsMesh();
}).observe(document.documentElement, { childList: true, subtree: true });
