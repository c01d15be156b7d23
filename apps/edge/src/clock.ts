// The edge's time source is @iop/clock's (one Clock for both apps); the edge's modules import it through this
// base-layer module. Its system clock unrefs every timer: a pending queue timeout, deadline or background-response
// expiry never keeps the edge alive on shutdown.
export { repeat, sleep, systemClock, type Clock, type ClockTimer } from '@iop/clock';
