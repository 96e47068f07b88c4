import { useQuery } from '@tanstack/react-query';
import { api } from '../../api/client';
import type { TwoFactorStatus } from '../../api/types';
import { QueryView } from '../../ui/states';
import { PasskeysSection } from './passkeys-section';
import { TotpSection, TWO_FACTOR_KEY } from './totp-section';

/** The profile's sign-in security: two-factor codes and passkeys (also the enrolment page's content). */
export function TwoFactorCards() {
  const status = useQuery({
    queryKey: TWO_FACTOR_KEY,
    queryFn: () => api<{ data: TwoFactorStatus }>('/two-factor'),
  });
  return (
    <QueryView query={status} what="Loading two-factor settings">
      {({ data }) => (
        <>
          <TotpSection status={data} />
          <PasskeysSection passkeys={data.passkeys} />
        </>
      )}
    </QueryView>
  );
}
