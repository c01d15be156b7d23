// The one helper for typed errors. A layer's error carries a stable `code` that callers switch on (never the
// message), its own `name`, the `cause` it wraps and, when it follows from the code, whose fault it is. A layer
// declares its codes as a union and, for the fault, one table code → fault; `typedError` makes the class from
// those, so no layer writes that constructor again:
//
//   export class PoolError extends typedError('PoolError', POOL_FAULT) {}
//
// The class is a real class: `instanceof` works, a subclass may add fields and its own constructor.

/**
 * Whose fault an error is: the caller's (bad input: a 4xx, retrying the same call will not help), transient (a
 * retry may succeed: 429/503), or a bug (500). The one field every typed error with a fault carries.
 */
export type ErrorFault = 'caller' | 'transient' | 'bug';

/** The fault of each code of one error class. */
export type FaultTable<Code extends string> = Readonly<Record<Code, ErrorFault>>;

export interface TypedErrorOptions {
  /** The error this one wraps (kept as the standard `Error.cause`). */
  cause?: unknown;
}

/** An error with a stable machine code. */
export interface CodedError<Code extends string> extends Error {
  readonly code: Code;
}

/** An error with a stable machine code and the fault that follows from it. */
export interface FaultedError<Code extends string> extends CodedError<Code> {
  readonly fault: ErrorFault;
}

export type CodedErrorClass<Code extends string> = new (
  code: Code,
  message: string,
  options?: TypedErrorOptions,
) => CodedError<Code>;

export type FaultedErrorClass<Code extends string> = new (
  code: Code,
  message: string,
  options?: TypedErrorOptions,
) => FaultedError<Code>;

/** A base class for an error named `name` with a code (`typedError<Code>('X')`), and with a fault per code. */
export function typedError<Code extends string>(name: string): CodedErrorClass<Code>;
export function typedError<Code extends string>(
  name: string,
  faults: FaultTable<Code>,
): FaultedErrorClass<Code>;
export function typedError<Code extends string>(
  name: string,
  faults?: FaultTable<Code>,
): CodedErrorClass<Code> | FaultedErrorClass<Code> {
  class Coded extends Error implements CodedError<Code> {
    override readonly name: string = name;
    constructor(
      readonly code: Code,
      message: string,
      options?: TypedErrorOptions,
    ) {
      super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    }
  }
  if (faults === undefined) return Coded;
  const table = faults;
  return class Faulted extends Coded implements FaultedError<Code> {
    readonly fault: ErrorFault;
    constructor(code: Code, message: string, options?: TypedErrorOptions) {
      super(code, message, options);
      this.fault = table[code];
    }
  };
}

/** The `isXError(value)` guard of an error class. */
export function errorGuard<T extends Error>(
  type: abstract new (...args: never[]) => T,
): (value: unknown) => value is T {
  return (value: unknown): value is T => value instanceof type;
}
