-- Which setting of a stream's position its deliveries go on from (docs/decisions/0146-webhook-position-went-back.md).
-- A delivery moves position_* forward and keeps position_origin; anything that sets the position
-- otherwise (the stream created, by POST or by a PATCH that adds its resource; a replay) gives it a
-- new one. An instance remembers the position it recorded as delivered with the origin it read: the
-- stored position behind it under the same origin is history the database lost (a failover to a
-- standby that lagged, a restore), under another origin a move the integrator asked for. Random, not
-- a counter: a counter taken back by a restore and bumped again by a replay could name a move on
-- purpose with the value an instance remembers.
ALTER TABLE webhook_streams ADD COLUMN position_origin uuid NOT NULL DEFAULT gen_random_uuid();
