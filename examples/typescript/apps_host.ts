// A minimal MCP Apps host around the official AppBridge (@modelcontextprotocol/ext-apps):
// it loads a server's ui:// view in a sandboxed iframe, hands it a tool result, and
// passes the view's tool calls to `window.callTool`, which the page's owner provides
// (blendmesh's card tests forward them to a real MCP session). Bundled for the browser:
//   esbuild apps_host.ts --bundle --format=iife --outfile=apps_host.js
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

declare global {
  interface Window {
    callTool: (params: unknown) => Promise<unknown>;
    showApp: (html: string, toolResult: unknown) => Promise<void>;
  }
}

window.showApp = async (html, toolResult) => {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.cssText = "width: 640px; height: 480px; border: 1px solid #999";
  document.body.append(frame);
  const bridge = new AppBridge(
    null,
    { name: "blendmesh-test-host", version: "1" },
    { serverTools: {} },
  );
  bridge.oncalltool = async (params) => (await window.callTool(params)) as never;
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  // Listening before the view loads: it says ui/initialize as soon as it runs.
  const contentWindow = frame.contentWindow!;
  await bridge.connect(new PostMessageTransport(contentWindow, contentWindow));
  frame.srcdoc = html;
  const late = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error("the view did not initialize within 20 s")), 20_000),
  );
  await Promise.race([initialized, late]);
  await bridge.sendToolResult(toolResult as never);
};
