/**
 * Every state of a delivery (docs/api.md#webhook-deliveries): the one definition, used by the
 * database types, the schemas, the services and (type-only) the console.
 */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
