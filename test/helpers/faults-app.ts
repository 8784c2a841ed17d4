/*
 * ownedTenantApp and its type now live in ./app.js beside appForNewTenant (one TenantApp); this
 * module re-exports them for the suites that still import them from here.
 */
export { type OwnedTenantApp, ownedTenantApp } from './app.js';
