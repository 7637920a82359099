// The console's 3D view: a revision's glTF (exported by the bridge) in three.js, orbited
// with the mouse. Vendored at a pinned version (static/vendor/README.md): no CDN.
import * as THREE from "three";
import { GLTFLoader } from "/static/vendor/three/examples/jsm/loaders/GLTFLoader.js";
import { OrbitControls } from "/static/vendor/three/examples/jsm/controls/OrbitControls.js";

const BACKGROUND = 0x2b2b2b;

class Viewer {
  constructor(canvas) {
    this.canvas = canvas;
    // preserveDrawingBuffer: what is on the canvas can be read back (a test, a screenshot).
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(window.devicePixelRatio || 1);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(BACKGROUND);
    // Lit from every side, so no face turned away from the key light is black.
    this.scene.add(new THREE.AmbientLight(0xffffff, 0.8));
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 1.5));
    const key = new THREE.DirectionalLight(0xffffff, 2.0);
    key.position.set(3, 5, 4);
    const fill = new THREE.DirectionalLight(0xffffff, 0.8);
    fill.position.set(-4, -2, -3);
    this.scene.add(key, fill);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.01, 10000);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.addEventListener("change", () => this.render());
    this.controls.listenToKeyEvents(canvas); // arrow keys pan while the canvas has focus
    this.model = null;
    this.shown = null; // "scene@revision" once its model is in the scene
    this.frames = 0;
    new ResizeObserver(() => this.resize()).observe(canvas);
  }

  resize() {
    const { clientWidth: width, clientHeight: height } = this.canvas;
    if (!width || !height) return;
    this.renderer.setSize(width, height, false);
    this.camera.aspect = width / height;
    this.camera.updateProjectionMatrix();
    this.render();
  }

  render() {
    this.renderer.render(this.scene, this.camera);
    this.frames += 1;
  }

  // Show the GLB in ``data`` (an ArrayBuffer) as ``key``, framed from the front right.
  async show(data, key) {
    const gltf = await new GLTFLoader().parseAsync(data, "");
    if (this.model) this.scene.remove(this.model);
    this.model = gltf.scene;
    this.scene.add(this.model);
    const box = new THREE.Box3().setFromObject(this.model);
    const center = box.isEmpty() ? new THREE.Vector3() : box.getCenter(new THREE.Vector3());
    const radius = box.isEmpty() ? 1 : Math.max(box.getSize(new THREE.Vector3()).length() / 2, 0.1);
    const distance = radius / Math.sin(THREE.MathUtils.degToRad(this.camera.fov) / 2) * 1.1;
    // Blender's front right, in glTF's y-up axes.
    const direction = new THREE.Vector3(1, 0.8, 1).normalize();
    this.camera.position.copy(center).addScaledVector(direction, distance);
    this.camera.near = distance / 100;
    this.camera.far = distance * 100;
    this.camera.updateProjectionMatrix();
    this.controls.target.copy(center);
    this.controls.update();
    this.shown = key;
    this.resize();
    this.render();
  }

  // The names of the meshes on show (what a test, or a person's console, can ask).
  meshNames() {
    const names = [];
    if (this.model) this.model.traverse((o) => o.isMesh && names.push(o.name || o.parent.name));
    return names;
  }
}

let viewer = null;
window.blendmeshViewer = {
  async show(data, key) {
    if (!viewer) viewer = new Viewer(document.getElementById("viewer-canvas"));
    await viewer.show(data, key);
    return viewer;
  },
  get current() {
    return viewer;
  },
};
