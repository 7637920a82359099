// The blendmesh web console: plain JS over the HTTP API (docs/http-api.md), no build step.
"use strict";

const TOKEN_KEY = "blendmesh.token";
const SCENE_KEY = "blendmesh.scene";
const $ = (id) => document.getElementById(id);
const objectUrls = {};

function token() {
  return $("token").value.trim();
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${token()}`, ...(options.headers || {}) };
  const response = await fetch(path, { ...options, headers, cache: "no-store" });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.error) message = `${body.error.type}: ${body.error.message}`;
    } catch (_) {
      // not JSON: keep the status line
    }
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return response;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "-" : String(text);
  row.appendChild(td);
  return td;
}

function logLine(text, kind) {
  const li = document.createElement("li");
  li.textContent = text;
  if (kind) li.className = kind;
  li.dataset.testid = "event";
  $("event-log").appendChild(li);
}

function short(hash) {
  return hash ? hash.slice(0, 12) : "-";
}

// Control, format (bidirectional overrides, zero-width) and separator characters, written
// as escapes so the code a person reads is the code that runs (contracts/trusted_code.py).
const HIDING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

function visible(text) {
  return text.replace(HIDING, (ch) =>
    ch === "\t" ? ch : `\\u${ch.codePointAt(0).toString(16).padStart(4, "0")}`,
  );
}

function numbered(code) {
  const lines = code.split("\n").map((line) => visible(line.replace(/\r$/, "")));
  const width = String(lines.length).length;
  return lines.map((line, i) => `${String(i + 1).padStart(width)} | ${line}`).join("\n");
}

// -- a run, streamed ------------------------------------------------------------------

async function submitRun(event) {
  event.preventDefault();
  showError("");
  localStorage.setItem(TOKEN_KEY, token());
  localStorage.setItem(SCENE_KEY, $("scene-id").value.trim());
  $("event-log").replaceChildren();
  $("run-status").textContent = "";
  $("audit-table").tBodies[0].replaceChildren();
  $("result-section").hidden = true;
  $("audit-section").hidden = true;
  const body = { prompt: $("prompt").value.trim(), sceneId: $("scene-id").value.trim() };
  $("submit").disabled = true;
  try {
    const response = await api("/api/agent/run/stream", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    await readStream(response);
  } catch (error) {
    showError(error.message);
  } finally {
    $("submit").disabled = false;
  }
}

async function readStream(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) await onStreamItem(JSON.parse(line));
    }
    if (done) break;
  }
  if (buffer.trim()) await onStreamItem(JSON.parse(buffer));
}

async function onStreamItem(item) {
  switch (item.type) {
    case "status":
      $("run-id").textContent = item.runId;
      logLine(`run ${item.runId}: ${item.status}`, "status");
      break;
    case "delta":
      logLine(item.delta);
      break;
    case "result":
      logLine(`result: ${item.result.status}`, "status");
      await showResult(item.result);
      break;
    case "error":
      logLine(item.error, "error");
      showError(item.error);
      break;
    default:
      break;
  }
}

// -- approvals ------------------------------------------------------------------------

// Every approval the user's runs wait on, or only ``runId``'s.
// The inbox is redrawn only when the set of waiting approvals changed, so a card a person
// is reading (or clicking) stays put while the page keeps itself up to date.
let shownApprovals = "";

async function showPending(runId) {
  const response = await api("/api/agent/approvals/pending");
  const { approvals } = await response.json();
  const mine = runId ? approvals.filter((a) => a.runId === runId) : approvals;
  const key = mine.map((a) => `${a.approvalId}:${a.requestHash}`).join(",");
  $("inbox-count").textContent = mine.length ? `(${mine.length})` : "";
  $("inbox-empty").hidden = mine.length > 0;
  $("approvals").hidden = false;
  if (key === shownApprovals) return;
  shownApprovals = key;
  const box = $("pending");
  box.replaceChildren();
  for (const approval of mine) box.appendChild(approvalCard(approval));
}

function approvalCard(approval) {
  const card = document.createElement("article");
  card.className = "approval";
  card.dataset.testid = "approval";
  card.dataset.approvalId = approval.approvalId;
  const reason = document.createElement("p");
  reason.textContent = `Run ${approval.runId}: ${approval.reason}`;
  card.appendChild(reason);
  if (approval.leadOf) {
    // An artist's run: only a lead (or supervisor) of the project may answer it.
    const lead = document.createElement("p");
    lead.dataset.testid = "waits-for-lead";
    lead.textContent = `${approval.user}'s run waits for a lead of ${approval.leadOf}.`;
    card.appendChild(lead);
  }
  const list = document.createElement("ul");
  for (const op of approval.operations) {
    const li = document.createElement("li");
    li.dataset.testid = "pending-operation";
    const trusted = op.tool === "python.trusted";
    // Trusted code is shown as a numbered block under its operation, not as one long line.
    const { code, ...args } = op.args;
    const shown = trusted ? args : op.args;
    li.textContent = `${op.operationId} ${op.tool} (${op.safetyLevel}) ${visible(JSON.stringify(shown))}`;
    if (trusted) li.appendChild(trustedCode(typeof code === "string" ? code : "", args.code_sha256));
    list.appendChild(li);
  }
  card.appendChild(list);
  const buttons = document.createElement("div");
  buttons.className = "buttons";
  const choices = [
    ["approve_once", "Approve", "approve"],
    ["approve_and_always_allow", "Approve and always allow", "approve-always"],
    ["reject", "Reject", "reject"],
  ];
  for (const [decision, label, testid] of choices) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.dataset.testid = testid;
    button.setAttribute("aria-label", `${label}: ${approval.operations.map((o) => o.tool).join(", ")}`);
    button.addEventListener("click", () => resolve(approval, decision, buttons));
    buttons.appendChild(button);
  }
  // Cancelling ends the whole run, not only this question: nothing of it is kept.
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "Cancel run";
  cancel.dataset.testid = "cancel-run";
  cancel.setAttribute("aria-label", `Cancel run ${approval.runId}`);
  cancel.addEventListener("click", () => cancelRun(approval.runId, buttons));
  buttons.appendChild(cancel);
  card.appendChild(buttons);
  return card;
}

function trustedCode(code, hash) {
  const figure = document.createElement("figure");
  figure.className = "trusted-code";
  const caption = document.createElement("figcaption");
  caption.append("trusted Python, ");
  const named = document.createElement("code");
  named.dataset.testid = "code-sha256";
  named.textContent = hash || "";
  caption.appendChild(named);
  const block = document.createElement("pre");
  block.dataset.testid = "trusted-code";
  block.textContent = numbered(code);
  figure.append(caption, block);
  return figure;
}

async function resolve(approval, decision, buttons) {
  await answerCard(buttons, `${decision} ${approval.approvalId}`, "/api/agent/approvals/resolve", {
    approvalId: approval.approvalId,
    decision,
    requestHash: approval.requestHash,
    // The hashes of the trusted code this card showed: approving quotes them.
    codeSha256: decision === "reject" ? [] : approval.codeSha256 || [],
  });
}

async function cancelRun(runId, buttons) {
  const path = `/api/runs/${encodeURIComponent(runId)}/cancel`;
  await answerCard(buttons, `cancel ${runId}`, path, { reason: "cancelled in the console" });
}

// One answer to an approval card (approve, reject, cancel): the card's buttons wait for it.
async function answerCard(buttons, line, path, body) {
  showError("");
  for (const button of buttons.querySelectorAll("button")) button.disabled = true;
  logLine(line, "status");
  try {
    const response = await api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    await showResult(await response.json());
    await guarded(() => showPending(null));
    await guarded(refreshRuns);
  } catch (error) {
    showError(error.message);
    for (const button of buttons.querySelectorAll("button")) button.disabled = false;
  }
}

// -- the answer: result, audit trail, scene -------------------------------------------

async function showResult(result) {
  $("result-section").hidden = false;
  $("run-id").textContent = result.runId;
  $("run-status").textContent = result.status;
  $("run-summary").textContent = result.summary || "";
  const gates = $("run-gates");
  gates.hidden = !result.gates;
  if (result.gates) {
    gates.className = result.gates.success ? "gates-passed" : "gates-failed";
    gates.textContent = result.gates.success
      ? "gates passed"
      : `gates failed (${result.gates.failedGates.join(", ")}): ${result.gates.messages.join("; ")}`;
  }
  const rows = $("actions-table").tBodies[0];
  rows.replaceChildren();
  for (const action of result.actions || []) {
    const row = rows.insertRow();
    row.dataset.testid = "action-row";
    cell(row, action.operationId);
    cell(row, action.tool);
    cell(row, action.status);
    cell(row, action.requiresApproval ? "required" : "-");
  }
  const failure = $("failure");
  failure.hidden = !result.failure;
  failure.textContent = result.failure
    ? `${result.failure.errorCode}: ${result.failure.retryHint}`
    : "";
  if (result.status === "awaiting_confirmation") {
    await guarded(() => showPending(null));
    return;
  }
  await guarded(() => showAudit(result.runId));
  if (result.scenePath) {
    // The run's own scene (an approval from the inbox may be for another than the form's).
    const named = /^\/api\/scenes\/([A-Za-z0-9_-]+)\.blend$/.exec(result.scenePath);
    const sceneId = named ? named[1] : $("scene-id").value.trim();
    let made = null; // the revision this run committed: its own picture, not the head's
    await guarded(async () => {
      made = await runRevision(sceneId, result.runId);
    });
    await guarded(() => showScene(sceneId, result.scenePath, made));
    if (made) {
      await guarded(() => showCompare(sceneId, made, result.runId));
      await guarded(() => showModel(sceneId, made, MODEL_TRIES));
    }
  }
}

async function guarded(step) {
  try {
    await step();
  } catch (error) {
    showError(error.message);
  }
}

async function showAudit(runId) {
  const response = await api(`/api/runs/${encodeURIComponent(runId)}/audit`);
  const { records } = await response.json();
  const rows = $("audit-table").tBodies[0];
  rows.replaceChildren();
  for (const record of records) {
    const row = rows.insertRow();
    row.dataset.testid = "audit-row";
    cell(row, record.seq);
    cell(row, new Date(record.timestamp).toLocaleTimeString());
    cell(row, record.operationId);
    cell(row, record.toolName);
    cell(row, record.safetyLevel);
    cell(row, record.status);
    cell(row, short(record.sceneHashBefore));
    cell(row, short(record.sceneHashAfter));
  }
  $("audit-section").hidden = false;
}

async function blobUrl(key, path) {
  const blob = await (await api(path)).blob();
  if (objectUrls[key]) URL.revokeObjectURL(objectUrls[key]);
  objectUrls[key] = URL.createObjectURL(blob);
  return objectUrls[key];
}

// Previews are rendered off the run's path, so a run may finish before its picture: the
// console asks again, every PREVIEW_RETRY_MS, at most PREVIEW_TRIES times.
const PREVIEW_RETRY_MS = 1000;
const PREVIEW_TRIES = 60;
let previewFor = null; // the scene whose preview is on show (or awaited)

// ``revision``, when known, is pictured itself: the head's picture may still be an older
// revision's while the newest is being rendered.
async function showScene(sceneId, scenePath, revision = null) {
  $("scene-section").hidden = false;
  const link = $("download");
  link.download = `${sceneId}.blend`;
  link.href = await blobUrl("blend", scenePath);
  previewFor = `${sceneId}@${revision}`;
  await showPreview(sceneId, revision, PREVIEW_TRIES);
}

async function showPreview(sceneId, revision, tries) {
  const key = `${sceneId}@${revision}`;
  if (previewFor !== key) return; // another scene is on show now
  const path = revision
    ? sceneUrl(sceneId, `/revisions/${revision}/preview.png`)
    : sceneUrl(sceneId, "/preview.png");
  try {
    const url = await blobUrl("preview", path);
    if (previewFor !== key) return;
    $("preview").src = url;
    $("preview-caption").textContent = revision
      ? `Rendered after revision ${revision}.`
      : "Rendered after the scene's last commit.";
  } catch (error) {
    if (error.status !== 404) throw error;
    $("preview").removeAttribute("src");
    $("preview-caption").textContent = "No preview has been rendered for this scene yet.";
    if (tries > 1) {
      setTimeout(() => guarded(() => showPreview(sceneId, revision, tries - 1)), PREVIEW_RETRY_MS);
    }
  }
}

// What waits for the user when the console opens, or once they give their token.
async function showAllPending() {
  if (!token()) return;
  localStorage.setItem(TOKEN_KEY, token());
  // An MCP host's URL-mode ask opens /?run=RUN: the inbox shows that run's approval.
  const asked = new URLSearchParams(location.search).get("run");
  await guarded(() => showPending(asked));
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = localStorage.getItem(TOKEN_KEY) || "";
  $("scene-id").value = localStorage.getItem(SCENE_KEY) || "default";
  $("run-form").addEventListener("submit", submitRun);
  $("token").addEventListener("change", showAllPending);
  showAllPending();
});

// -- your scenes: the picker, a scene's summary and history, revert ----------------------

function sceneUrl(sceneId, rest = "") {
  return `/api/scenes/${encodeURIComponent(sceneId)}${rest}`;
}

// The user's scenes in the picker; the scene chosen before stays chosen if it is listed.
async function loadScenes() {
  if (!token()) return;
  const { scenes } = await (await api("/api/scenes")).json();
  const picker = $("scene-picker");
  const chosen = picker.value;
  picker.replaceChildren(picker.options[0]);
  for (const scene of scenes) {
    const option = document.createElement("option");
    option.value = scene.sceneId;
    const objects = scene.objects === null ? "" : `, ${scene.objects} objects`;
    const by = scene.changedBy ? `, last changed by ${scene.changedBy}` : "";
    option.textContent = `${scene.sceneId} (revision ${scene.revision}${objects}${by})`;
    picker.appendChild(option);
  }
  picker.value = scenes.some((s) => s.sceneId === chosen) ? chosen : "";
  if (!picker.value) $("scene-details").hidden = true;
}

// Choosing a scene makes it the scene of the next request and shows what it holds.
async function chooseScene() {
  const sceneId = $("scene-picker").value;
  if (!sceneId) {
    $("scene-details").hidden = true;
    return;
  }
  $("scene-id").value = sceneId;
  localStorage.setItem(SCENE_KEY, sceneId);
  await showSceneDetails(sceneId);
}

async function showSceneDetails(sceneId) {
  const summary = await (await api(sceneUrl(sceneId))).json();
  $("scene-summary").textContent = summary.text.join("\n");
  const { revisions } = await (await api(sceneUrl(sceneId, "/history"))).json();
  const rows = $("history-table").tBodies[0];
  rows.replaceChildren();
  for (const revision of [...revisions].reverse()) {
    const row = rows.insertRow();
    row.dataset.testid = "history-row";
    cell(row, revision.revision);
    cell(row, revision.storedAt ? new Date(revision.storedAt).toLocaleString() : null);
    cell(row, revision.runId);
    cell(row, revision.user);
    cell(row, revision.tools.join(", "));
    cell(row, revision.sceneHashPrefix);
    const action = cell(row, "");
    action.appendChild(compareButton(sceneId, revision.revision, revision.runId));
    action.appendChild(changesButton(sceneId, revision.revision));
    action.appendChild(modelButton(sceneId, revision.revision));
    // The head is the scene as it is: only an earlier revision can be gone back to.
    if (revision.revision !== summary.revision) {
      action.appendChild(revertButton(sceneId, revision.revision));
    }
  }
  $("scene-details").hidden = false;
  await showScene(sceneId, sceneUrl(sceneId, ".blend"), summary.revision);
}

function revertButton(sceneId, revision) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Revert";
  button.dataset.testid = "revert";
  button.setAttribute("aria-label", `Revert ${sceneId} to revision ${revision}`);
  button.addEventListener("click", () => revertTo(sceneId, revision, button));
  return button;
}

// A revert is a destructive run: it waits for approval, shown as any other approval card.
async function revertTo(sceneId, revision, button) {
  showError("");
  $("event-log").replaceChildren();
  $("result-section").hidden = true;
  $("audit-section").hidden = true;
  button.disabled = true;
  logLine(`revert ${sceneId} to revision ${revision}`, "status");
  try {
    const response = await api(sceneUrl(sceneId, "/revert"), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ revision }),
    });
    const { run } = await response.json();
    await showResult(run);
  } catch (error) {
    showError(error.message);
  } finally {
    button.disabled = false;
  }
}

async function refreshScenes() {
  await loadScenes();
  if ($("scene-picker").value) await showSceneDetails($("scene-picker").value);
}

document.addEventListener("DOMContentLoaded", () => {
  $("scene-picker").addEventListener("change", () => guarded(chooseScene));
  $("scenes-refresh").addEventListener("click", () => guarded(refreshScenes));
  $("token").addEventListener("change", () => guarded(loadScenes));
  guarded(loadScenes);
});

// -- who you are: the token's user, and the mesh's (the CLI's by default) ---------------

async function showWhoami() {
  const box = $("whoami");
  if (!token()) {
    box.hidden = true;
    return;
  }
  try {
    const me = await (await api("/api/me")).json();
    box.replaceChildren();
    box.append("This token is user ");
    const name = document.createElement("strong");
    name.dataset.testid = "whoami-user";
    name.textContent = me.user;
    box.append(name, ": you see and approve ", me.user, "'s runs and scenes.");
    if (me.meshUser !== me.user) {
      const hint = document.createElement("small");
      hint.dataset.testid = "whoami-hint";
      hint.textContent =
        ` The mesh runs the CLI as ${me.meshUser} (BLENDMESH_USER), whose scenes this token ` +
        `does not see: map a token to ${me.meshUser}, or set BLENDMESH_USER=${me.user} for the CLI.`;
      box.append(hint);
    }
    box.classList.remove("error");
  } catch (error) {
    box.textContent = error.status === 401 ? "This token is not valid." : error.message;
    box.classList.add("error");
  }
  box.hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").addEventListener("change", showWhoami);
  showWhoami();
});

// -- your runs, kept up to date: the list is read again every RUNS_POLL_MS --------------
// The gateway streams only the run a page submitted; runs started elsewhere (the CLI as
// the same user, another tab, an agent over MCP) are seen by asking again. When a run
// ends or starts waiting, the inbox, the scene list and the chosen scene follow.

const RUNS_POLL_MS = 2000;
const RUNS_SHOWN = 50;
const ENDED = new Set(["completed", "failed"]);
let runStates = null; // runId -> state, as last shown
const TO_THE_MS = {
  hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3, hourCycle: "h23",
};

// A run's timeline as GET /api/runs/{runId} lays it out (as `blendmesh runs show` does).
async function showTimeline(runId) {
  const detail = await (await api(`/api/runs/${encodeURIComponent(runId)}`)).json();
  const said = (stage, v) =>
    v ? `${stage} by blendmesh ${v.blendmeshVersion || "?"}, tool catalog ` +
        `${v.catalogVersion || "?"}, Blender ${v.blenderVersion || "?"}` : "";
  // Which door asked, and the run a re-run or fork came from (ADR 0063).
  const origin = detail.origin;
  const from = origin && (origin.kind === "fork"
    ? `revision ${origin.baseRevision}` : `operation ${origin.fromOp}`);
  $("timeline-origin").textContent = `Asked through ${detail.door || "?"}.` +
    (origin ? ` A ${origin.kind} of run ${origin.run} from ${from}.` : "");
  const { planned, executed } = detail.versions;
  $("timeline-versions").textContent =
    [said("Planned", planned), said("executed", executed)].filter(Boolean).join("; ") + ".";
  const gates = detail.gates.map((g) =>
    `gates ${g.passed ? "passed" : "failed " + g.failedGates.join(", ")} on revision ${g.revision}`);
  $("timeline-revision").textContent = (detail.revision === null
    ? "It made no revision." : `It made revision ${detail.revision}.`) +
    (gates.length ? ` ${gates.join("; ")}.` : "");
  const ops = $("timeline-ops").tBodies[0];
  ops.replaceChildren();
  for (const op of detail.operations) {
    const row = ops.insertRow();
    row.dataset.testid = "timeline-op";
    cell(row, op.operationId);
    cell(row, op.tool);
    cell(row, op.args ? visible(JSON.stringify(op.args)) : op.argsExcerpt);
    cell(row, op.decision);
    cell(row, op.approvedBy);
    cell(row, op.rolledBackBy ? `${op.status} (${op.rolledBackBy})` : op.status);
    cell(row, op.durationMs === null ? null : op.durationMs.toFixed(1));
    cell(row, short(op.sceneHashBefore));
    cell(row, short(op.sceneHashAfter));
  }
  const events = $("timeline-events").tBodies[0];
  events.replaceChildren();
  for (const entry of detail.timeline) {
    const row = events.insertRow();
    row.dataset.testid = "timeline-event";
    // To the millisecond: most of a run's events fall within one second.
    const at = new Date(entry.at);
    cell(row, at.toLocaleTimeString(undefined, TO_THE_MS));
    cell(row, entry.type.replace(/^run\./, ""));
    cell(row, visible(entry.detail));
  }
  $("timeline-section").hidden = false;
}

let polling = null;

async function refreshRuns() {
  if (!token()) return;
  const { runs } = await (await api("/api/runs")).json();
  const states = new Map(runs.map((r) => [r.runId, r.status]));
  const before = runStates;
  runStates = states;
  drawRuns(runs.slice(0, RUNS_SHOWN));
  if (before === null) return;
  const changed = runs.filter((r) => before.get(r.runId) !== r.status);
  if (!changed.length) return;
  const waiting = (state) => state === "awaiting_confirmation";
  if (changed.some((r) => waiting(r.status) || waiting(before.get(r.runId)))) {
    await guarded(() => showPending(null));
  }
  const ended = changed.filter((r) => ENDED.has(r.status));
  if (ended.length) {
    await guarded(loadScenes);
    const chosen = $("scene-picker").value;
    if (chosen && ended.some((r) => r.sceneId === chosen)) {
      await guarded(() => showSceneDetails(chosen));
    }
  }
}

function drawRuns(runs) {
  // Rows are updated in place, by run id, and a new run is inserted above the others:
  // rebuilt every RUNS_POLL_MS, the table took the keyboard focus from its Show buttons.
  const rows = $("runs-table").tBodies[0];
  const existing = new Map([...rows.rows].map((row) => [row.dataset.runId, row]));
  runs.forEach((run, at) => {
    const row = existing.get(run.runId) || runRow(run);
    existing.delete(run.runId);
    fillRunRow(row, run);
    if (rows.rows[at] !== row) rows.insertBefore(row, rows.rows[at] || null);
  });
  for (const gone of existing.values()) gone.remove();
  $("runs-note").textContent = runs.length
    ? `Your newest ${runs.length} runs, kept up to date while this page is open.`
    : "No runs yet.";
}

const RUN_CELLS = ["run", "request", "scene", "state", "error", "started", "updated"];

function runRow(run) {
  const row = document.createElement("tr");
  row.dataset.testid = "run-row";
  row.dataset.runId = run.runId;
  for (const name of RUN_CELLS) cell(row, "").dataset.cell = name;
  const show = document.createElement("button");
  show.type = "button";
  show.textContent = "Show";
  show.dataset.testid = "show-run";
  show.setAttribute("aria-label", `Show run ${run.runId}`);
  show.addEventListener("click", () => guarded(() => showRun(row.run)));
  cell(row, "").appendChild(show);
  return row;
}

function fillRunRow(row, run) {
  row.run = run;
  const put = (name, text) => {
    const td = row.querySelector(`[data-cell="${name}"]`);
    const shown = text === null || text === undefined || text === "" ? "-" : String(text);
    if (td.textContent !== shown) td.textContent = shown;
    return td;
  };
  put("run", run.runId);
  // A run made without words (an import, a revert) is listed by what it does.
  const asked = run.request || run.prompt;
  put("request", asked).title = asked || "";
  put("scene", run.sceneId);
  const state = put("state", run.status);
  state.className = `state-${run.status}`;
  state.dataset.testid = "run-state";
  put("error", run.errorCode);
  put("started", new Date(run.createdAt).toLocaleString());
  put("updated", new Date(run.updatedAt).toLocaleTimeString());
}

function poll() {
  if (polling !== null) clearTimeout(polling);
  polling = setTimeout(async () => {
    polling = null;
    if (!document.hidden) {
      try {
        await refreshRuns();
        meshReached();
      } catch (error) {
        // A network failure or a gateway that answers 502-504: the mesh is out of reach,
        // and the page says so (reach.js). Anything else (a bad token) is said once, by
        // the form; the next round tries again either way.
        if (error.status === undefined || error.status >= 502) meshUnreachable(error);
      }
    }
    poll();
  }, RUNS_POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").addEventListener("change", () => {
    runStates = null;
    guarded(refreshRuns);
  });
  guarded(refreshRuns);
  poll();
});

// -- a run's before and after: the pictures of the revision before it and of its own -----

let compareFor = null; // "scene@revision" on show (or awaited)

function compareButton(sceneId, revision, runId) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Before/after";
  button.dataset.testid = "compare-revision";
  button.setAttribute("aria-label", `Compare ${sceneId} revision ${revision} with the one before`);
  button.addEventListener("click", () => guarded(() => showCompare(sceneId, revision, runId)));
  return button;
}

// The revision ``runId`` committed on ``sceneId``; null when the history does not name it.
async function runRevision(sceneId, runId) {
  const { revisions } = await (await api(sceneUrl(sceneId, "/history"))).json();
  const made = revisions.find((r) => r.runId === runId);
  return made ? made.revision : null;
}

async function showCompare(sceneId, revision, runId) {
  compareFor = `${sceneId}@${revision}`;
  $("scene-section").hidden = false;
  $("compare").hidden = false;
  const by = runId ? ` by run ${runId}` : "";
  $("compare-heading").textContent = `Before and after revision ${revision} of ${sceneId}${by}`;
  const before = $("before");
  if (revision > 1) {
    await picture(compareFor, before, $("before-caption"), sceneId, revision - 1, PREVIEW_TRIES);
  } else {
    before.removeAttribute("src");
    $("before-caption").textContent = "Before revision 1 the scene was empty.";
    updateWipe();
  }
  await picture(compareFor, $("after"), $("after-caption"), sceneId, revision, PREVIEW_TRIES);
}

// A revision's picture into ``img``, asked again while it is being rendered.
async function picture(key, img, caption, sceneId, revision, tries) {
  if (compareFor !== key) return;
  try {
    const path = sceneUrl(sceneId, `/revisions/${revision}/preview.png`);
    const url = await blobUrl(img.id, path);
    if (compareFor !== key) return;
    img.src = url;
    caption.textContent = `Revision ${revision}`;
    updateWipe();
  } catch (error) {
    if (error.status !== 404) throw error;
    img.removeAttribute("src");
    caption.textContent =
      tries > 1
        ? `Revision ${revision}: waiting for its picture.`
        : `Revision ${revision} has no picture (a newer commit came first, or it is too old).`;
    if (tries > 1) {
      const again = () => picture(key, img, caption, sceneId, revision, tries - 1);
      setTimeout(() => guarded(again), PREVIEW_RETRY_MS);
    }
  }
}

// -- the 3D view of a revision: its glTF, exported with its picture, in static/viewer.js --

const MODEL_TRIES = 60;
let modelFor = null; // "scene@revision" on show (or awaited)

function modelButton(sceneId, revision) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "3D view";
  button.dataset.testid = "view-3d";
  button.setAttribute("aria-label", `3D view of ${sceneId} revision ${revision}`);
  button.addEventListener("click", () => {
    modelFor = null;
    guarded(() => showModel(sceneId, revision, MODEL_TRIES));
  });
  return button;
}

async function showModel(sceneId, revision, tries) {
  const key = `${sceneId}@${revision}`;
  if (tries === MODEL_TRIES) modelFor = key;
  if (modelFor !== key) return; // another revision is on show now
  $("scene-section").hidden = false;
  $("viewer").hidden = false;
  $("viewer-heading").textContent = `3D view of revision ${revision} of ${sceneId}`;
  const caption = $("viewer-caption");
  try {
    const path = sceneUrl(sceneId, `/revisions/${revision}/scene.glb`);
    const data = await (await api(path)).arrayBuffer();
    if (modelFor !== key) return;
    if (!window.blendmeshViewer) throw new Error("the 3D viewer did not load");
    const viewer = await window.blendmeshViewer.show(data, key);
    const names = viewer.meshNames();
    caption.textContent =
      `${names.length} meshes (${names.slice(0, 8).join(", ")}${names.length > 8 ? ", ..." : ""}). ` +
      "Drag to orbit, scroll to zoom, right-drag (or the arrow keys) to pan.";
  } catch (error) {
    if (error.status !== 404) throw error;
    caption.textContent =
      tries > 1
        ? `Revision ${revision}: waiting for its 3D model.`
        : `Revision ${revision} has no 3D model (not rendered, too large, or too old).`;
    if (tries > 1) setTimeout(() => guarded(() => showModel(sceneId, revision, tries - 1)), PREVIEW_RETRY_MS);
  }
}

// A run from the list: its audit trail and, once it committed, its before/after and 3D view.
async function showRun(run) {
  showError("");
  $("run-id").textContent = run.runId;
  await showAudit(run.runId);
  await showTimeline(run.runId);
  if (!run.sceneId || run.status !== "completed") return;
  const made = await runRevision(run.sceneId, run.runId);
  if (!made) return;
  await showCompare(run.sceneId, made, run.runId);
  await showModel(run.sceneId, made, MODEL_TRIES);
  $("compare").scrollIntoView({ block: "start" });
}
