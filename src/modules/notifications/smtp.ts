import { createTransport } from 'nodemailer';
import type { MailTransport } from './notifications.service.js';

/** nodemailer's SMTP transport for SMTP_URL (smtp:// with STARTTLS when offered, smtps:// TLS), with bounded waits. */
export function smtpTransport(url: string): MailTransport {
  return createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
}
