import { WsPushAdapter } from '../wspush';
import { DashAdapter } from './dash';
import { HlsAdapter } from './hls';
import type { PlayerAdapter, PlayerEvents, PlayerKind } from './types';

export * from './types';

export function createPlayer(kind: PlayerKind, video: HTMLVideoElement, on: PlayerEvents): PlayerAdapter {
  switch (kind) {
    case 'dashjs':
      return new DashAdapter(video, on);
    case 'hlsjs':
      return new HlsAdapter(video, on);
    case 'wspush':
      return new WsPushAdapter(video, on);
  }
}
