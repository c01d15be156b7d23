// Whose fault an error is: the one field every typed error of the edge carries (ServiceError, PoolError,
// NodeLinkError, TransportError, ...). Surfaces read it to decide between "your request is wrong" (4xx), "try
// again" (429/503) and "we have a bug" (500) without knowing every code of every layer.
export type ErrorFault = 'caller' | 'transient' | 'bug';
