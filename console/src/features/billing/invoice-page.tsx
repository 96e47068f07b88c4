import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { useCurrent, usePathTo } from '../../lib/session';
import { Empty, ErrorState, Loading } from '../../ui/states';
import { useInvoices } from './billing-data';
import { InvoiceDocument } from './invoice-view';

/**
 * One invoice as a clean page (docs/console.md#billing): the print stylesheet leaves only the
 * invoice on paper. Found in the invoice list, loading further pages until it turns up.
 */
export default function InvoicePage() {
  const { id } = useParams();
  const { isAdmin, membership } = useCurrent();
  const to = usePathTo();
  const invoices = useInvoices();
  const items = invoices.data?.pages.flatMap((p) => p.data) ?? [];
  const invoice = items.find((i) => i.id === id);
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = invoices;
  useEffect(() => {
    if (!invoice && hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [invoice, hasNextPage, isFetchingNextPage, fetchNextPage]);
  const back = (
    <p className="no-print">
      <Link to={to('/settings/billing')}>← Billing</Link>
    </p>
  );
  if (!isAdmin) {
    return (
      <section>
        {back}
        <Empty>
          <p>Only admins of this workspace can see its invoices.</p>
        </Empty>
      </section>
    );
  }
  return (
    <section>
      {back}
      {invoice ? (
        <>
          <InvoiceDocument invoice={invoice} workspaceName={membership.workspace_name} />
          <p className="no-print">
            <button type="button" onClick={() => window.print()}>
              Print
            </button>
          </p>
        </>
      ) : invoices.error ? (
        <ErrorState error={invoices.error} retry={() => invoices.refetch()} />
      ) : invoices.isPending || hasNextPage ? (
        <Loading what="Loading the invoice" />
      ) : (
        <Empty>
          <p>No invoice {id} in this workspace.</p>
        </Empty>
      )}
    </section>
  );
}
