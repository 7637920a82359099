// Your projects (docs/studio.md): each project the token's user is a member of, its role
// there, the members, the scenes and the locks held now. A read view: projects are managed
// with `blendmesh projects`, the HTTP API or the bus door. Loaded after app.js.
"use strict";

function projectCard(project) {
  const card = document.createElement("article");
  card.className = "project";
  card.dataset.testid = "project";
  card.dataset.projectId = project.projectId;
  const title = document.createElement("h3");
  title.textContent = `${project.projectId}: you are its ${project.role}`;
  card.appendChild(title);
  const members = document.createElement("p");
  members.dataset.testid = "project-members";
  members.textContent = "Members: " + project.members.map((m) => `${m.name} (${m.role})`).join(", ");
  card.appendChild(members);
  const scenes = document.createElement("p");
  scenes.dataset.testid = "project-scenes";
  scenes.textContent = "Scenes: " + (project.scenes.join(", ") || "none yet");
  card.appendChild(scenes);
  for (const lock of project.locks) {
    const locked = document.createElement("p");
    locked.dataset.testid = "project-lock";
    const until = new Date(lock.expiresAt * 1000).toLocaleTimeString();
    locked.textContent = `${lock.sceneId} is locked by ${lock.holder} until ${until}`;
    card.appendChild(locked);
  }
  return card;
}

async function loadProjects() {
  if (!token()) return;
  const { projects } = await (await api("/api/projects")).json();
  const box = $("project-list");
  box.replaceChildren(...projects.map(projectCard));
  $("projects-empty").hidden = projects.length > 0;
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").addEventListener("change", () => guarded(loadProjects));
  $("projects-refresh").addEventListener("click", () => guarded(loadProjects));
  guarded(loadProjects);
});
