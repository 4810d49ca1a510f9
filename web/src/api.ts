// The origin's stream catalogue: GET /api/streams.

/** One rendition of a stream, as /api/streams describes it. */
export interface Track {
  id: string;
  kind: 'video' | 'audio' | string;
  codec: string;
  bandwidth: number;
  width?: number;
  height?: number;
  frame_rate?: string;
  sample_rate?: number;
  channels?: number;
  timescale?: number;
}

/** A live channel or an on-demand asset. The same name may exist as both. */
export interface StreamInfo {
  name: string;
  live: boolean;
  segment_duration_ms?: number;
  /** Live channels made in chunks shorter than their segments: the longest chunk. Their
   * MPD (`dash`, not `dash_timeline`) is low-latency DASH (docs/protocols/ll-dash.md). */
  chunk_duration_ms?: number;
  dash?: string;
  dash_timeline?: string;
  hls?: string;
  ws?: string;
  tracks?: Track[];
}

/** GET /api/streams: the streams, and the origin's TLS port when it has one (where
 * a browser reaches its HTTP/2). */
export interface Catalogue {
  streams: StreamInfo[];
  httpsPort: number | null;
}

/** Fetches the catalogue; throws an Error with a readable message on failure. */
export async function fetchStreams(signal?: AbortSignal): Promise<Catalogue> {
  let res: Response;
  try {
    res = await fetch('/api/streams', { signal, headers: { Accept: 'application/json' } });
  } catch (err) {
    throw new Error(`GET /api/streams failed: ${(err as Error).message}`);
  }
  if (!res.ok) {
    const body = (await res.text().catch(() => '')).trim().slice(0, 200);
    throw new Error(`GET /api/streams: HTTP ${res.status}${body ? ` — ${body}` : ''}`);
  }
  const doc = (await res.json()) as { streams?: StreamInfo[]; https_port?: unknown };
  if (!doc || !Array.isArray(doc.streams)) {
    throw new Error('GET /api/streams: answer has no "streams" list');
  }
  const p = doc.https_port;
  const httpsPort = typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536 ? p : null;
  return { streams: doc.streams, httpsPort };
}

/** A stable key for a stream: a name alone is not unique (live and VOD may share it). */
export function streamKey(s: Pick<StreamInfo, 'name' | 'live'>): string {
  return `${s.live ? 'live' : 'vod'}/${s.name}`;
}

/** "1280×720 1.50 Mb/s avc1.64001f" and friends, for the stream list. */
export function describeTrack(t: Track): string {
  const rate = formatBitrate(t.bandwidth);
  if (t.kind === 'video') {
    const size = t.width && t.height ? `${t.width}×${t.height}` : 'video';
    return `${size} ${rate}`;
  }
  if (t.kind === 'audio') {
    const khz = t.sample_rate ? ` ${Math.round(t.sample_rate / 1000)} kHz` : '';
    const ch = t.channels ? ` ${t.channels}ch` : '';
    return `audio ${rate}${khz}${ch}`;
  }
  return `${t.kind} ${rate}`;
}

/** Bits per second as "850 kb/s" or "1.50 Mb/s"; "–" when unknown. */
export function formatBitrate(bps: number | null | undefined): string {
  if (bps == null || !Number.isFinite(bps) || bps <= 0) return '–';
  if (bps >= 1e6) return `${(bps / 1e6).toFixed(2)} Mb/s`;
  return `${Math.round(bps / 1e3)} kb/s`;
}
