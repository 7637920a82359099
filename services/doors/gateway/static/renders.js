// A render job's contact sheet (docs/renders.md): every stored frame as a thumbnail, with
// the job's status, read again every SHEET_POLL_MS until the job ends. Open it with the
// job id, or as /#render=JOB. Loaded after app.js (api, token, $).
"use strict";

const SHEET_POLL_MS = 1000;
const SHEET_MAX = 240; // thumbnails on one sheet; a longer job's first frames are shown
const SHEET_FINAL = new Set(["completed", "cancelled", "failed"]);
const sheetUrls = new Map(); // frame -> object URL of its PNG, for the job on show
let sheetJob = null;

function sheetReset(jobId) {
  for (const url of sheetUrls.values()) URL.revokeObjectURL(url);
  sheetUrls.clear();
  $("sheet").replaceChildren();
  sheetJob = jobId;
}

async function sheetFrame(jobId, frame) {
  const path = `/api/renders/${encodeURIComponent(jobId)}/frames/${frame.frame}`;
  const blob = await (await api(path)).blob();
  if (sheetJob !== jobId) return;
  const url = URL.createObjectURL(blob);
  sheetUrls.set(frame.frame, url);
  const figure = document.createElement("figure");
  figure.dataset.testid = "sheet-frame";
  figure.dataset.frame = String(frame.frame);
  const img = document.createElement("img");
  img.src = url;
  img.alt = `frame ${frame.frame}`;
  const caption = document.createElement("figcaption");
  caption.textContent = String(frame.frame);
  figure.append(img, caption);
  // In frame order, whatever order the executors stored them in.
  const after = [...$("sheet").children].find((el) => Number(el.dataset.frame) > frame.frame);
  $("sheet").insertBefore(figure, after || null);
}

async function showSheet(jobId) {
  if (sheetJob !== jobId) sheetReset(jobId);
  $("sheet-section").hidden = false;
  let job;
  try {
    job = await (await api(`/api/renders/${encodeURIComponent(jobId)}`)).json();
  } catch (error) {
    $("sheet-status").textContent = error.message;
    return;
  }
  if (sheetJob !== jobId) return;
  const shown = job.frames.slice(0, SHEET_MAX);
  const more = job.frames.length > SHEET_MAX ? ` (the first ${SHEET_MAX} shown)` : "";
  $("sheet-status").textContent =
    `Job ${job.jobId} of scene ${job.sceneId} revision ${job.revision}: ${job.status}, `
    + `${job.frames.length} of ${job.total} frames${more}. ${job.message || ""}`;
  $("sheet-status").dataset.status = job.status;
  for (const frame of shown) {
    if (!sheetUrls.has(frame.frame)) {
      sheetUrls.set(frame.frame, ""); // asked for: not again on the next read
      await sheetFrame(jobId, frame);
    }
  }
  if (!SHEET_FINAL.has(job.status)) {
    setTimeout(() => { if (sheetJob === jobId) showSheet(jobId); }, SHEET_POLL_MS);
  }
}

function sheetFromHash() {
  const found = /^#render=([A-Za-z0-9_-]{1,128})$/.exec(window.location.hash);
  if (found) {
    $("sheet-job").value = found[1];
    showSheet(found[1]);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("sheet-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const jobId = $("sheet-job").value.trim();
    if (jobId) showSheet(jobId);
  });
  window.addEventListener("hashchange", sheetFromHash);
  sheetFromHash();
});
