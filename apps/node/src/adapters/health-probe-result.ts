// What a backend health probe answers, shared by the adapter interface and the HTTP client's probes (kept below
// both, so neither imports the other for it).

export type HealthState = 'healthy' | 'unhealthy' | 'unreachable';

/**
 * Why a probe failed, as a stable code an operator (and a script) can act on: nothing listens
 * (`connection_refused`), no answer in time (`timeout`), a certificate or handshake problem (`tls`), a name that
 * does not resolve (`dns`), the peer reset the connection (`connection_reset`), no route (`host_unreachable`),
 * the server answered with an HTTP error (`http_status`) or with something unreadable (`invalid_response`),
 * another socket error (`network`), the probe was cancelled (`cancelled`), anything else (`error`).
 */
export type HealthCause =
  | 'connection_refused'
  | 'timeout'
  | 'tls'
  | 'dns'
  | 'connection_reset'
  | 'host_unreachable'
  | 'http_status'
  | 'invalid_response'
  | 'network'
  | 'cancelled'
  | 'error';

export interface HealthProbeResult {
  health: HealthState;
  detail: string;
  /** Set when the probe failed (health is not `healthy`). */
  cause?: HealthCause;
  /** Models the backend reports (empty when unknown). */
  models: string[];
}
