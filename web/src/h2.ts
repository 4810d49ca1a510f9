// LL-HLS over HTTP/2 for a page loaded over plain HTTP.
//
// hls.js on a lossy link plays LL-HLS near PART-HOLD-BACK over HTTP/2 and does not
// over HTTP/1.1 (docs/results/latency.md, "where the time goes"), and Apple's HLS
// authoring spec asks LL-HLS delivery to meet the Low-Latency Server Configuration
// Profile (docs/protocols/ll-hls.md). Browsers speak HTTP/2 only over TLS, so a page
// on http: plays LL-HLS from the origin's TLS port (/api/streams' https_port) when the
// browser can reach it — it cannot when the certificate is self-signed and not yet
// accepted, and then the page stays on HTTP/1.1 and says why. ?hlsproto=http1 keeps
// LL-HLS on the page's own origin (the lab's HTTP/1.1 row).

/** 'http1': LL-HLS from the page's origin whatever it speaks; 'auto': over HTTP/2
 * (the origin's TLS port) when the page is on http: and the browser reaches it. */
export type HlsProtocol = 'auto' | 'http1';

export function hlsProtocol(param: string | null): HlsProtocol {
  return param === 'http1' ? 'http1' : 'auto';
}

/** url on the origin's TLS port, or null when the page is not on plain HTTP (an
 * https: page already speaks HTTP/2 to its origin). */
export function tlsURL(url: string, pageHref: string, httpsPort: number): string | null {
  const u = new URL(url, pageHref);
  if (u.protocol !== 'http:' || new URL(pageHref).protocol !== 'http:') return null;
  u.protocol = 'https:';
  u.port = String(httpsPort);
  return u.href;
}

/** Why the browser cannot use the TLS origin of url (a GET /time there), or null when
 * it can. An untrusted certificate fails the request; the wait is bounded. */
export async function tlsUnreachable(url: string, timeoutMs = 5000): Promise<string | null> {
  try {
    const res = await fetch(new URL('/time', url), { signal: AbortSignal.timeout(timeoutMs), cache: 'no-store' });
    return res.ok ? null : `GET /time: HTTP ${res.status}`;
  } catch (err) {
    return (err as Error).message || String(err);
  }
}
