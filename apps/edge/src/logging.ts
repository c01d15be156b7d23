// The edge's logger: @iop/logging (shared with the node agent), re-exported so components import it from one place.
export * from '@iop/logging';
