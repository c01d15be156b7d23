// What a backend health probe answers, shared by the adapter interface and the HTTP client's probes (kept below
// both, so neither imports the other for it).

export type HealthState = 'healthy' | 'unhealthy' | 'unreachable';

export interface HealthProbeResult {
  health: HealthState;
  detail: string;
  /** Models the backend reports (empty when unknown). */
  models: string[];
}
