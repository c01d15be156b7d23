// The dashboard's static files (HTML, JS, CSS) as the edge serves them: built by `make compile` (apps/edge-ui,
// Vite) into a generated module of the @iop/edge-ui package and bundled into the release executable with the rest
// of the edge, so the dashboard works offline and needs no files beside the binary.
export interface UiAsset {
  contentType: string;
  body: Buffer;
}

/** URL path (`/index.html`, `/assets/index-abc123.js`) → file. */
export type UiAssets = ReadonlyMap<string, UiAsset>;

/** The shape of the generated module (apps/edge-ui/scripts/embed-assets.mjs). */
export interface EmbeddedAssetModule {
  uiAssets: Readonly<Record<string, { contentType: string; base64: string }>>;
}

export function assetsFromModule(module: EmbeddedAssetModule): UiAssets {
  const assets = new Map<string, UiAsset>();
  for (const [path, asset] of Object.entries(module.uiAssets)) {
    assets.set(path, { contentType: asset.contentType, body: Buffer.from(asset.base64, 'base64') });
  }
  if (!assets.has('/index.html')) throw new Error('the embedded dashboard has no /index.html');
  return assets;
}

/** The assets embedded in this build; loaded on first use so an edge without the dashboard never reads them. */
export async function loadEmbeddedAssets(): Promise<UiAssets> {
  const module = (await import('@iop/edge-ui')) as EmbeddedAssetModule;
  return assetsFromModule(module);
}
