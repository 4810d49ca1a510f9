import { DashAdapter } from './dash';
import { HlsAdapter } from './hls';
import type { PlayerAdapter, PlayerEvents, PlayerKind } from './types';

export * from './types';

export function createPlayer(kind: PlayerKind, video: HTMLVideoElement, on: PlayerEvents): PlayerAdapter {
  return kind === 'dashjs' ? new DashAdapter(video, on) : new HlsAdapter(video, on);
}
