// Public API of @iop/errors: the one helper for typed errors.
export {
  errorGuard,
  typedError,
  type CodedError,
  type CodedErrorClass,
  type ErrorFault,
  type FaultedError,
  type FaultedErrorClass,
  type FaultTable,
  type TypedErrorOptions,
} from './typed-error.js';
