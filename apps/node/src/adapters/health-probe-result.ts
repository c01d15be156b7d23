// What a backend health probe answers, shared by the adapter interface and the HTTP client's probes (kept below
// both, so neither imports the other for it).

export type HealthState = 'healthy' | 'unhealthy' | 'unreachable';

/**
 * Why a probe failed, as a stable code an operator (and a script) can act on: nothing listens
 * (`connection_refused`), no answer in time (`timeout`), a certificate or handshake problem (`tls`), a name that
 * does not resolve (`dns`), the peer reset the connection (`connection_reset`), no route (`host_unreachable`),
 * the server answered with an HTTP error (`http_status`) or with something unreadable (`invalid_response`),
 * another socket error (`network`), the probe was cancelled (`cancelled`), anything else (`error`). A CLI profile:
 * its command is not on the PATH its runs get (`command_not_found`), or `<command> --version` failed
 * (`command_failed`).
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
  | 'command_not_found'
  | 'command_failed'
  | 'error';

/** The health of one target of an adapter (a CLI profile). */
export interface TargetHealth {
  health: HealthState;
  detail: string;
  /** Set when not healthy. */
  cause?: HealthCause;
}

export interface HealthProbeResult {
  health: HealthState;
  detail: string;
  /** Set when the probe failed (health is not `healthy`). */
  cause?: HealthCause;
  /** Models the backend reports (empty when unknown). */
  models: string[];
  /**
   * Health by target (a CLI adapter's profiles): a provider serving some of these targets gets the first unhealthy
   * one's health, else healthy, instead of the adapter-wide result.
   */
  targets?: Readonly<Record<string, TargetHealth>>;
}
